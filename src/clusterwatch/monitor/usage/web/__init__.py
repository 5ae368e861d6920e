"""The usage reports' web layer: the researchers' and staff's pages and the JSON API.

`*_page.py` builds a page's data (`job_page`, `user_page`, with `user_jobs`, `job_rows`,
`staff_rows`, `row_markup`, `list_params`); `*_views.py` answers requests (`page_views`,
`api_views`, `render_views`, `index_views`, `mail_views`), `urls` mounts them, `access`
says who may see which job, `report_answers` maps a usage report's failures to answers.
"""
