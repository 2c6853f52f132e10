"""Evaluations: retrieval similarity (AMADEUS Table 1), chunk usage (Figure 1, Table 3), personality (Tables 4-5)."""
