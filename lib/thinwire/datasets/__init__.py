"""Datasets read into memory once (MD5-checked), partitioned across workers."""

from .checked_file import DatasetChecksumError, DatasetMissingError
from .dataset import Dataset
from .partition import SAMPLINGS, BatchStream, partition
from .registry import IMAGE_SHAPES, LOADERS, TRAIN_SIZES, input_shape, load_dataset
from .transforms import AUGMENTS, STANDARDIZE, central_crop, normalize, prepare, random_crop_flip

__all__ = ["AUGMENTS", "DatasetChecksumError", "DatasetMissingError", "Dataset", "BatchStream", "partition", "SAMPLINGS",
           "IMAGE_SHAPES", "LOADERS", "TRAIN_SIZES", "load_dataset", "normalize", "random_crop_flip",
           "STANDARDIZE", "central_crop", "prepare", "input_shape"]
