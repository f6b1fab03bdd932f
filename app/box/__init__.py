"""The box: one core, about one second per review and a 1.2 GiB cap around the lab server (`python -m app.box`)."""
