"""Other papers' parkour methods (hil, llp, hpl), each ending in the same bundle contract as PHP."""
