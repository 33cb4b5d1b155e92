"""Users and organizations: their JSON and the routes that read them. It imports the store, the
errors and the route table.
"""
