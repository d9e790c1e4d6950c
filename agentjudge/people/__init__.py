"""People check the programmatic reference: ``human-sample`` (a stratified sample for annotators) and
``human-agree`` (the reference's agreement with their labels, with CIs; see README.md)."""
