"""What runs where: per service and environment (`status.py`), the environments as a Mermaid
flowchart (`graph_chart.py`), and the dashboard issue that shows both with the delivery
figures (`issue.py`), made from the capabilities it is handed (`DashboardCapabilities`). It
imports watching, the gate's enforcement, history, opening and authorship.
"""
