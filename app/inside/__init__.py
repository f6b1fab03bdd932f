"""The box seen from inside the server: what runs in the server because it lives in one (the speed loop, its
CPU meter and burn, the stand-in memory, the box's report, its memory cgroup read and written; the box's
state is a setting, `BoxState` in app/settings.py, and the box's knobs are app/knobs/box.py).

The supervisor program that builds the box (`python -m app.box`) is app/box/; it imports from here, never the
other way round.
"""
