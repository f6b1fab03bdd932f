"""What idle event-stream followers cost a live server: CPU and POST latency (a measurement, not a test).

`python -m tools.followers_cost [--followers 100] [--tickets 20]`: a server whose
first review holds the lane (slowed to ~120 s by burning CPU), `tickets` queued tickets,
`followers` streams each following all of them; then the server's CPU share over a quiet
window outside the lane (the lane's busy seconds, from /api/stats, are taken off: its burning
is the held review, not the followers) and the median of 20 sequential ticket POSTs.
Run under `flock /tmp/lab-cpu.lock`.
"""

import argparse
import asyncio
import platform
import statistics
import time

import httpx
import psutil

from kit.live import live_server, slowed

WINDOW_S = 5.0


async def measure(url: str, pid: int, followers: int, tickets: int) -> dict[str, float]:
    limits = httpx.Limits(max_connections=followers + 20)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
        ids = [
            (await client.post("/api/queue/jobs", json={"text": f"따라갈 리뷰 {i}번"})).json()["job_id"]
            for i in range(tickets)
        ]
        query = "&".join(f"job_id={job_id}" for job_id in ids)
        ready = asyncio.Semaphore(0)

        async def follow() -> None:
            seen = 0
            async with client.stream("GET", f"/api/queue/events?{query}", timeout=None) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("data: "):
                        seen += 1
                        if seen == tickets:
                            ready.release()

        streams = [asyncio.create_task(follow()) for _ in range(followers)]
        for _ in range(followers):
            await ready.acquire()
        process = psutil.Process(pid)
        busy_before = (await client.get("/api/stats")).json()["lane"]["busy_s"]
        before, started = process.cpu_times(), time.monotonic()
        await asyncio.sleep(WINDOW_S)  # the quiet window being measured
        after, elapsed = process.cpu_times(), time.monotonic() - started
        lane_s = (await client.get("/api/stats")).json()["lane"]["busy_s"] - busy_before
        cpu = (after.user + after.system - before.user - before.system - lane_s) / elapsed
        latencies = []
        for i in range(20):
            t0 = time.perf_counter()
            response = await client.post("/api/queue/jobs", json={"text": f"재는 리뷰 {i}번"})
            latencies.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 202, response.text
        for task in streams:
            task.cancel()
        await asyncio.gather(*streams, return_exceptions=True)
    return {"cpu_share": cpu, "post_ms_median": statistics.median(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--followers", type=int, default=100)
    parser.add_argument("--tickets", type=int, default=20)
    parser.add_argument("--store", default=None, help="LAB_JOB_STORE (default: a private sqlite file)")
    args = parser.parse_args()
    settings = {**slowed(120), "LAB_QUEUE_MAX_JOBS": "200", "LAB_WARMUP": "false"}
    if args.store:
        settings["LAB_JOB_STORE"] = args.store
    with live_server(**settings) as server:
        found = asyncio.run(measure(server.url, server.process.pid, args.followers, args.tickets))
    print(
        f"{args.followers} followers x {args.tickets} tickets, {platform.node()}, {psutil.cpu_count()} CPUs: "
        f"server CPU {found['cpu_share'] * 100:.1f} % of one core over {WINDOW_S:g} s idle; "
        f"POST median {found['post_ms_median']:.1f} ms (20 sequential)"
    )


if __name__ == "__main__":
    main()
