"""Bags: record the stack's topics to MCAP (rosbag2 layout), read them back, replay them against a bundle."""
