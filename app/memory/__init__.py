"""Memory in the server: ①'s guard and giving the kernel back what a crowd left."""
