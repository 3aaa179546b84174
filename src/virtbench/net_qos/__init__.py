"""Pure QoS computations for the network studies (001 vswitch QoS, 002 VNF scalability).

No process is spawned here: inputs are arrays, parsed tool outputs and pcap files.
"""
