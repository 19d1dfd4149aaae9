"""Stage publish: Markdown, JSON and HTML from the models, and where results go.

Owns rendering and writing; never calls the network."""
