"""Stage weekly: the week's computed facts and the narrative around them.

Owns analysis and narration; never writes files."""
