"""Client-side measuring tools (benchmarks, load); never imported by the server."""
