"""Stage store: the SQLite store, its migrations and cache keys.

Owns what is kept between runs; never renders."""
