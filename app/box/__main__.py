"""`python -m app.box --host 127.0.0.1 --port 8000`: serve the lab inside the box (one core, ~1 s/review, 1.2 GiB)."""

import argparse
import logging
import sys

from app.box.supervisor import serve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="box: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the health polls are not news
    returncode = serve(args.host, args.port)
    sys.exit(returncode if returncode > 0 else 0)  # killed by the signal we forwarded is a clean stop


if __name__ == "__main__":
    main()
