"""What runs where: per service and environment (`status.py`), the environments as a Mermaid
flowchart (`graph_chart.py`), and the dashboard issue that shows both with the delivery
figures (`issue.py`). It imports watching, history, opening and authorship; of
`bot.services` only the type of the bundle it is handed.
"""
