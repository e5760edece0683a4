"""HIL (Hybrid Imitation Learning of parkour skills): an AMP discriminator and hybrid tracking/adversarial envs."""
