"""torch.distributed.fsdp: FullyShardedDataParallel and its options (see
fully_sharded_data_parallel.py and _flat_param.py; wrap.py holds the auto-wrap policies)."""
from .fully_sharded_data_parallel import (BackwardPrefetch, CPUOffload, FullStateDictConfig,
                                          FullyShardedDataParallel, LocalStateDictConfig,
                                          ShardedStateDictConfig, ShardedTensor, ShardingStrategy,
                                          StateDictType)

__all__ = ["FullyShardedDataParallel", "ShardingStrategy", "BackwardPrefetch", "StateDictType",
           "FullStateDictConfig", "ShardedStateDictConfig", "LocalStateDictConfig", "CPUOffload",
           "ShardedTensor"]
