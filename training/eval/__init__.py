"""`parkour eval`: PHP's success-rate protocol in MuJoCo through the deployed runtime code."""
