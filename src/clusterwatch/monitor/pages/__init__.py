"""The operators' pages: hosts overview, PanDA queue page, job page.

The `*_view` modules and `why` are pure: they turn stored records (plain dicts) into plain
view data, so what a page says can be tested without a database or a browser. `views`
only reads the few rows a page needs and hands that data to a template.
"""
