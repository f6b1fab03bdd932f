"""The Grafana dashboard's PromQL, read from the committed JSON, with its variables made concrete."""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.settings import PROJECT_ROOT

DASHBOARD = PROJECT_ROOT / "grafana" / "dashboards" / "review-lab.json"

# What Grafana would put in place of each variable: every path, and a window that spans
# many 1 s scrapes but still holds a burst fired a few seconds ago.
CONCRETE = {"path": ".*", "__rate_interval": "1m", "__interval": "1m", "__range": "1m"}
VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")
METRIC_NAME = re.compile(r"\b((?:review|process)_[a-z_]+)\b")


@dataclass(frozen=True)
class PanelQuery:
    panel: str
    legend: str
    expr: str

    @property
    def promql(self) -> str:
        """The expression as Prometheus receives it from Grafana; an unknown variable is an error."""

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2)
            if name not in CONCRETE:
                raise KeyError(f"panel {self.panel!r} uses ${name}, which the tests cannot substitute")
            return CONCRETE[name]

        return VARIABLE.sub(substitute, self.expr)

    @property
    def metric_names(self) -> set[str]:
        return set(METRIC_NAME.findall(self.expr))


def load_dashboard(path: Path = DASHBOARD) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def all_panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those tucked inside collapsed rows."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def panel_queries(dashboard: dict[str, Any] | None = None) -> list[PanelQuery]:
    dashboard = dashboard or load_dashboard()
    return [
        PanelQuery(panel["title"], target.get("legendFormat", ""), target["expr"])
        for panel in all_panels(dashboard)
        for target in panel.get("targets", [])
        if target.get("expr")
    ]
