"""HTTP routers: they translate requests into calls on the lab's parts, nothing more."""
