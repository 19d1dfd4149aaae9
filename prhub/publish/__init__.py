"""Stage publish: each report's view, built once from the models (`view`, made of `parts`),
rendered to Markdown, JSON and HTML by templates, and where results go.

Owns rendering and writing; never calls the network."""
