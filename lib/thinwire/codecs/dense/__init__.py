"""Dense transmissions: every value, as float32, float16 or bfloat16."""
