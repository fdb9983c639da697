"""The fuzzing campaign: configuration, the main loop, live progress."""
from memo.campaign.config import Budget, CampaignConfig, campaign_dir, default_name
from memo.campaign.runner import Campaign

__all__ = ["Budget", "Campaign", "CampaignConfig", "campaign_dir", "default_name"]
