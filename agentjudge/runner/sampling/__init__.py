"""A sampled grid (pipeline key ``sampling``, ``agentjudge run --target-ci``): judge as few base scenarios as
give every cell the confidence interval asked for. ``spec`` is the pipeline key, ``stages`` plans and
decides the stages of a run, ``record`` is the run folder's ``sampling.json``, ``estimate`` the dry run's
sampled estimate. The statistics (order, sizes, weights, the finite-population correction) are
``agentjudge.stats.design``."""
