"""The dashboard served by `glider serve` at `/ui/`: the routes (`routes`) and the page files (`static/`,
plus `page.html`, the one shell every page is served in). Plain HTML, CSS and JavaScript shipped as
package data: no build step, nothing fetched from the network at run time."""
