"""The fuzzing campaign: configuration (:mod:`~memo.campaign.config`), the generation loop
(:mod:`~memo.campaign.loop`), the execution pipelines (:mod:`~memo.campaign.pipeline`), the campaign
itself (:mod:`~memo.campaign.campaign`), its disk use and live progress.

Nothing is imported here, so that importing one light module (the configuration) costs only that module.
"""
