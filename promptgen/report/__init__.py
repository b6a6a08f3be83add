"""Reports written from a context: overview table, Markdown, HTML, JUnit, test review."""
