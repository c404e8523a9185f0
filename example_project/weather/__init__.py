"""Seattle weather 2012-2015 (vega-datasets), imported, aggregated and reported by tasks."""
