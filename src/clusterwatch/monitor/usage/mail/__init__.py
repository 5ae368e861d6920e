"""The end-of-job mail: `poll` lists the batch jobs that ended, `outbox` keeps each mail
until it is sent (Django models), `recipient` says to whom, `content`, `html_part`, `pdfs`
and `message` write it, `connection` and `delivery` send it over SMTP with the `settings`
read from the environment; `slurm_mailprog` is the entry point for Slurm's MailProg.
"""
