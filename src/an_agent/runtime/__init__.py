"""The agent runtime: datastore, edit-config, filters, tasks, notifications, and the NETCONF RpcHandler."""
