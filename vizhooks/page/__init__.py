"""Page-only code: texts, URL state, the code view's snippets, one-photo analysis and the byte
cache. ``import vizhooks`` never imports this package, so the library stays free of page code."""
