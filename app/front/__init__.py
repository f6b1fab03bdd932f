"""The classroom front: nginx terminating HTTPS and speaking HTTP/2, with per-client limits, in front of the box."""
