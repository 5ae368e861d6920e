"""The monitor's alarms: conditions over each key's latest record, delivered as the pool
watch delivers (clusterwatch.notify), with the outbox and the incidents in the database.

rules (and disk_rule, panda_rule) observe; transitions decide; store and outbox_store keep
state; lease serialises runs across hosts; run ties one evaluation and delivery together.
"""
