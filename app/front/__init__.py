"""The classroom front: Caddy terminating HTTPS and speaking HTTP/2 in front of the box."""
