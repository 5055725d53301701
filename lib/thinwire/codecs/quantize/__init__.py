"""Quantization: the min-max quantizer and Oland & Raj's bin quantizer with its entropy rule."""
