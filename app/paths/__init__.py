"""The paths: the registry, the pipeline around a direct path, and each path with what only it uses."""
