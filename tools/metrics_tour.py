"""`just metrics`: the lab and a real Prometheus, one burst per path, then every dashboard query with its values.

Lets the instructor see that each Grafana panel has data before class, without Grafana.
`--hold` keeps both running afterwards so Grafana (or the Prometheus UI) can be pointed at them.
"""

import argparse
import asyncio
import math
import time

from kit.dashboard import panel_queries
from kit.live import live_server
from kit.prometheus import prometheus_binary, running_prometheus
from kit.traffic import BURST_SETTINGS, fire_bursts


def show(value: float) -> str:
    return "NaN" if math.isnan(value) else f"{value:.4g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hold", action="store_true", help="keep the lab and Prometheus running until Ctrl-C")
    args = parser.parse_args()
    if prometheus_binary() is None:
        print("prometheus is not installed: apt-get install prometheus (or `just test`, which installs it).")
        return 2
    print("Starting the lab (tiny model slowed by CPU burning) and Prometheus ...", flush=True)
    with live_server(**BURST_SETTINGS) as lab, running_prometheus(lab.url.removeprefix("http://")) as prom:
        print(f"lab        {lab.url}   ({', '.join(f'{k}={v}' for k, v in BURST_SETTINGS.items())})")
        print(f"prometheus {prom.url}")
        prom.wait_until(prom.target_is_up, "the lab's /metrics scraped")
        report = asyncio.run(fire_bursts(lab.url))
        for path, statuses in report.statuses.items():
            print(f"burst {path:8} statuses {dict(sorted(statuses.items()))}  cache hits {report.cache_hits[path]}")
        print(f"batch sizes {sorted(report.batch_sizes)}, tickets done {report.jobs_done}")
        prom.wait_until(lambda: prom.value("sum(review_requests_total)") == report.answered, "the burst scraped")
        missing = 0
        for query in panel_queries():
            samples = prom.query(query.promql)
            if not any(math.isfinite(s.value) for s in samples):
                missing += 1
            print(f"\n[{query.panel}] {query.legend}\n  {query.promql}")
            for sample in samples or []:
                labels = ", ".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                print(f"  -> {show(sample.value):>10}  {labels}")
            if not samples:
                print("  -> (no data)")
        print(f"\n{len(panel_queries()) - missing} of {len(panel_queries())} dashboard queries have data.")
        if args.hold:
            print(f"Holding: Prometheus at {prom.url}, lab at {lab.url}. Ctrl-C to stop.", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
