// The lab's paths in display order, as the server lists them in the page's #lab-paths block
// (app/api/page.py, `page_paths`): the only place the page's JS learns their names, labels and routes.

/**
 * [{name, number, label, route, answer, gives_up, batches, seats}, …]: `answer` is "direct" or
 * "ticket", `gives_up` is the comparison's sentence ({said, none_refused, counts_refusals}), `batches` and `seats` say what to show.
 */
export const PATHS = Object.freeze(JSON.parse(document.getElementById("lab-paths").textContent));

const byName = new Map(PATHS.map((path) => [path.name, path]));

/** The path called `name`, or undefined for one this box does not serve (e.g. in an old saved burst). */
export const pathNamed = (name) => byName.get(name);
