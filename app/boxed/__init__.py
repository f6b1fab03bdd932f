"""The server's side of the box: what runs inside the server because it lives in one (the speed loop, its
CPU meter and burn, the stand-in memory, the box's state and report, its memory cgroup read and written).

The supervisor program (`python -m app.box`) is app/box/; it imports from here, never the other way round."""
