"""Layer 2: zero, mask and physically remove attention heads and MLP channels."""
from repro.structure.channels import remove_channels, zero_channels
from repro.structure.heads import full_groups, plan_layer, removal_counts, remove_heads, zero_heads
from repro.structure.masks import Masks, group_mask
from repro.structure.persist import load_pruned, save_pruned, shape_of

__all__ = ["Masks", "group_mask", "full_groups", "load_pruned", "plan_layer", "removal_counts", "remove_channels", "remove_heads", "save_pruned",
           "shape_of", "zero_channels", "zero_heads"]
