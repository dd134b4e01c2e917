"""Cited answers (Lume's answering planner): kenning.answer.answering is the entry point."""
