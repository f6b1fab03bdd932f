// Which HTTP the page came over: the browser's six-connections limit holds only for HTTP/1.1. Behind the
// classroom front (HTTPS, HTTP/2) a burst's requests are streams on one connection and reach the box at
// once, so the page says the six-connection note only where it is true (`nextHopProtocol`).

/** "h2", "h3", "http/1.1", or "" where the browser does not say. */
export function pageProtocol() {
  const [navigation] = performance.getEntriesByType("navigation");
  return navigation ? navigation.nextHopProtocol : "";
}

/** True unless the page knows it came over HTTP/2 or HTTP/3. */
export const sixConnections = () => !["h2", "h3"].includes(pageProtocol());

/** Shows `[data-http1-only]` or `[data-http2-only]`, whichever is true for this page. */
export function showProtocolNotes() {
  const six = sixConnections();
  document.body.dataset.protocol = pageProtocol();
  for (const node of document.querySelectorAll("[data-http1-only]")) node.hidden = !six;
  for (const node of document.querySelectorAll("[data-http2-only]")) node.hidden = six;
}
