"""A run's steps and metrics: the series view (one row per recorded batch, whose columns stay in
its event) and the chart view (the min/max rollup of every metric); their tables (schema), how
each event changes them (handlers, rollup), and their reads: series pages (pages), charts and
metric stats (charts, over the step ranges of ranges)."""
