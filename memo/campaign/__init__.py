"""The fuzzing campaign: configuration, the generation loop, the execution pipelines, live progress."""
from memo.campaign.campaign import Campaign
from memo.campaign.config import Budget, CampaignConfig, campaign_dir, default_name

__all__ = ["Budget", "Campaign", "CampaignConfig", "campaign_dir", "default_name"]
