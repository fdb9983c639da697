"""The bug database: bugs remembered across campaigns, their status, and rechecking them on new library versions."""
