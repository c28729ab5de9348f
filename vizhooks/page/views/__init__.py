"""The page's views, one module each, each with ``show(ctx: Context) -> None``. A new view is one
module here, one line in app.py's VIEWS table, its name in vizhooks.page.urlstate.VIEWS and its texts."""
