"""Training a search agent for your own corpus (Context-1's recipe, reproduced).

``c1 train synth``   verified multi-hop tasks from an indexed collection, written by a teacher model
``c1 train collect`` teacher trajectories through the real c1 loop, scored and filtered
``c1 train sft``     LoRA supervised fine-tuning on the kept trajectories (assistant turns only)
``c1 train rl``      CISPO reinforcement learning with LoRA against the same loop

The maths (reward, CISPO loss, quote verification, trajectory selection) lives in small pure
modules (``reward``, ``cispo``, ``verify``, ``collect.select_runs``); torch, transformers, trl and
peft are imported only inside the functions that train, never when ``c1`` starts.
"""
