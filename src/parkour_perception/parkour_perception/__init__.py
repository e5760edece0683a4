"""Depth camera: RealSense capture with exposure-time stamping and the policy preprocessing."""

import contextlib

# Load order matters: pyrealsense2 2.59 links its own copy of Fast DDS (librealsense's DDS
# devices) and exports its symbols. Loaded before rclpy, a process that then creates an rclpy
# node crashes on exit (SIGSEGV in free() from an exit handler, exit status 139: a pytest run
# "passes" and still fails). Loaded after rclpy, both work. Every module here that touches
# pyrealsense2 is imported through this package, so rclpy comes first when it is installed.
with contextlib.suppress(ImportError):
    import rclpy  # noqa: F401
