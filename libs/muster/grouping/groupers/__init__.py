"""The built-in plugins, one module per workload family; ``muster.grouping.registry`` routes to them."""
