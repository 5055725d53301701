"""Dense transmissions: every value, as float32 or float16."""
