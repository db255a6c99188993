Model status
Optimal

# Primal solution values
Feasible
Objective 6.5
# Columns 4
s_0_1 1
s_1_1 1
s_2_1 1
s_3_1 1
# Rows 0
