"""Stage digest: one prepared PR to one validated digest, its content checks and grounding.

Owns budgets, plans and map-reduce through llm; never touches files or terminals."""
