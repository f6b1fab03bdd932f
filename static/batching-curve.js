// ③'s note: draws the measured batching cost curve (static/batching-curve.json, written by
// `python -m app.bench.batching`) as seconds per review against batch size, one line per packing.
"use strict";

(function () {
  const figure = document.getElementById("batching-curve");
  if (!figure) return;
  const svgNs = "http://www.w3.org/2000/svg";
  const colors = ["#2b6cb0", "#c05621"];
  const labels = { 24: "길이순 24쌍 묶음 (랩이 쓰는 방식)", 0: "묶음 전체를 가장 긴 리뷰에 맞춰 채움" };

  function el(name, attrs, text) {
    const node = document.createElementNS(svgNs, name);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function draw(data) {
    const width = 460, height = 220, left = 48, right = 12, top = 12, bottom = 36;
    const curves = data.curves;
    const maxY = Math.max(...curves.flatMap((c) => c.points.map((p) => p.per_review_s))) * 1.1;
    const x = (n) => left + ((n - 1) / 7) * (width - left - right);
    const y = (s) => top + (1 - s / maxY) * (height - top - bottom);
    const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "묶음 크기별 리뷰당 추론 시간", style: "width: 100%; max-width: 460px" });
    svg.append(el("line", { x1: left, y1: y(0), x2: width - right, y2: y(0), stroke: "#999" }));
    svg.append(el("line", { x1: left, y1: top, x2: left, y2: y(0), stroke: "#999" }));
    for (let n = 1; n <= 8; n++) {
      svg.append(el("text", { x: x(n), y: height - bottom + 14, "text-anchor": "middle", "font-size": 11 }, n));
    }
    svg.append(el("text", { x: (left + width) / 2, y: height - 4, "text-anchor": "middle", "font-size": 11 }, "묶음 크기 n"));
    for (const tick of [0, maxY / 2, maxY / 1.1]) {
      svg.append(el("text", { x: left - 4, y: y(tick) + 4, "text-anchor": "end", "font-size": 10 }, tick.toFixed(2)));
    }
    svg.append(el("text", { x: 4, y: top + 2, "font-size": 10, "dominant-baseline": "hanging" }, "초/리뷰"));
    curves.forEach((curve, i) => {
      const points = curve.points.map((p) => `${x(p.n)},${y(p.per_review_s)}`).join(" ");
      svg.append(el("polyline", { points, fill: "none", stroke: colors[i % colors.length], "stroke-width": 2 }));
      for (const p of curve.points) {
        const dot = el("circle", { cx: x(p.n), cy: y(p.per_review_s), r: 3, fill: colors[i % colors.length] });
        dot.append(el("title", {}, `n=${p.n}: ${p.seconds.toFixed(3)} s, 리뷰당 ${p.per_review_s.toFixed(3)} s`));
        svg.append(dot);
      }
    });
    figure.querySelector(".curve-plot").replaceChildren(svg);

    const legend = figure.querySelector(".curve-legend");
    legend.replaceChildren();
    const single = curves[0].points[0].per_review_s; // one review at a time: the baseline
    curves.forEach((curve, i) => {
      const fit = curve.fit;
      const last = curve.points[curve.points.length - 1];
      const change = ((last.per_review_s / single - 1) * 100).toFixed(0);
      const item = document.createElement("li");
      item.style.color = colors[i % colors.length];
      item.textContent = `${labels[curve.chunk_pairs] || curve.packing}: 한 번 ≈ ${fit.a_s.toFixed(3)} + ${fit.b_s.toFixed(3)}·n 초` +
        ` — n=${last.n}이면 리뷰당 ${last.per_review_s.toFixed(3)} s (하나씩 ${single.toFixed(3)} s 대비 ${change > 0 ? "+" : ""}${change}%)`;
      legend.append(item);
    });
    figure.querySelector(".curve-measured").textContent = `측정: ${data.measured}`;
  }

  fetch("/static/batching-curve.json")
    .then((response) => (response.ok ? response.json() : Promise.reject(new Error(String(response.status)))))
    .then(draw)
    .catch(() => {
      figure.querySelector(".curve-measured").textContent = "측정값을 불러오지 못했습니다 (static/batching-curve.json).";
    });
})();
